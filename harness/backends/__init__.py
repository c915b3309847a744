"""Backends: one package per path, each a runner whose infer returns name -> array."""
