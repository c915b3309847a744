"""Pure-Python HEF reader."""
