"""Test settings: the project's settings with a fixed key and a fast simulator."""

from project.settings import *  # noqa: F403

SECRET_KEY = "tests-only-secret-key-not-for-production"
SIMULATOR_TOKENS_PER_SECOND = 2000.0
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
