"""The styles: what answers one request (System One, the llm dialect, recordings)."""
