"""Generated synchronous twins of the async modules; do not edit by hand."""
