"""Encryption at rest for secrets users hand over (the API keys of model endpoints).

Fernet (AES-128-CBC with HMAC-SHA256, from the ``cryptography`` package) under a key
derived with HKDF-SHA256 from ``IWR_ENCRYPTION_KEY`` or, when that is empty, from
``SECRET_KEY``. A database dump alone therefore reveals no key; the secret lives only in
the environment of the web and generation processes. Tokens are authenticated, so a
changed secret or a tampered row fails loudly instead of yielding garbage.
"""

from __future__ import annotations

import base64

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

# Fixed labels: a different purpose must use a different info string, so keys never repeat.
_SALT = b"iwr-bench-leaderboard"
_INFO = b"endpoint-api-keys-v1"


class DecryptionFailed(Exception):
    """The token cannot be read: the server's secret changed, or the stored bytes were altered."""


def _fernet() -> Fernet:
    secret = getattr(settings, "IWR_ENCRYPTION_KEY", "") or settings.SECRET_KEY
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=_SALT, info=_INFO).derive(secret.encode("utf-8"))
    return Fernet(base64.urlsafe_b64encode(derived))


def encrypt(text: str) -> bytes:
    """``text`` encrypted and authenticated; the result is safe to store."""
    return _fernet().encrypt(text.encode("utf-8"))


def decrypt(token: bytes | memoryview) -> str:
    """The text ``encrypt`` was given; raises DecryptionFailed (never revealing anything)."""
    try:
        return _fernet().decrypt(bytes(token)).decode("utf-8")
    except (InvalidToken, UnicodeDecodeError, TypeError, ValueError):
        raise DecryptionFailed("the stored secret cannot be decrypted with this server's key") from None
