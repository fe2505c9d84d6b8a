"""The service layer: the only code that changes conversation state.

Every function here is synchronous and transactional; async callers go through
``database_sync_to_async``. Doorbells and tasks are only sent after commit.
"""
