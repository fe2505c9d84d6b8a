"""The runtime on the server loop: engine, turn runner, sweeper, tool tasks, events."""
