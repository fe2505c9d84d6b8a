"""Read-side queries: the thread, the sidebar, access checks. Nothing here changes state."""
