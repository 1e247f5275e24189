"""salon.train"""
