"""Formats: converters between our messages and the wire shapes of model providers."""
