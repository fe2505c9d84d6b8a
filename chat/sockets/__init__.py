"""The WebSocket side: consumers, inbound frames, outbound fragments, tab state, limits."""
