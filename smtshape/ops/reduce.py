"""(rules being written)"""
