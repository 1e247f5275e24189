"""salon.curate"""
