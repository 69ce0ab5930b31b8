"""Registers the member-client fixtures; they live in client_support.py so tests can import its helpers."""
from client_support import clock, protocol, scripted  # noqa: F401  (pytest fixtures)
