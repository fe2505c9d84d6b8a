"""The model API side: client factory, retry policy, error texts, the request history."""
