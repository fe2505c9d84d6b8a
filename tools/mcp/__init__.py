"""MCP tool servers added in admin: their tools are offered and run like built-in tools.

`models` (servers and the tools they list), `rules` (names and default approval, pure),
`results` (SDK results and failures to tool results, pure), `client` (the official SDK over
streamable HTTP), `catalog` (refreshing a server's tools), `source` (the tools as ToolSpecs,
read from the database on every lookup, so task workers see what admin saved), `admin`.
"""
