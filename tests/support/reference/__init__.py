"""Deliberately plain, loop-based numpy references for layouts, decoding and NMS.

Kept apart from the fast code so that property tests compare two independent implementations.
"""
