"""salon.judges"""
