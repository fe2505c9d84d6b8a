"""Usage and cost arithmetic (pure, no I/O): token counts from the API's usage, prices, and the
cost sums behind prompt caching. Open to every room, like ``chat.models``."""
