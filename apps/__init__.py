"""salon.apps"""
