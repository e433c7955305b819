"""The model: the Messages API client and its providers, the reply stream, request JSON, model names and their lifecycle, prices, token counts, and the marks of side calls."""
