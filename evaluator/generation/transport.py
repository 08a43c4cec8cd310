"""One HTTP exchange with the endpoint, over a connection to the very address that was checked.

The host name is resolved once per attempt; when only public endpoints may be called, every
address it resolves to must be public. The connection then goes to one of those addresses
itself, with the name kept for the Host header and for TLS (SNI and certificate checks), so
no second DNS lookup can swap a private address in between the check and the request
(DNS rebinding). Redirects are never followed: http.client does not, and the caller treats
a 3xx as an answer. An API key never goes over plain http except to this machine, when the
settings allow it for development (see config_problems).
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

from evaluator.generation.config import TaskFailed


class Unreachable(Exception):
    """No connection could be made (worth retrying); the message names why, without secrets."""


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str
    port: int
    path: str

    @classmethod
    def of(cls, url: str) -> Target:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return cls(parts.scheme, parts.hostname or "", port, parts.path or "/")


def resolve(target: Target, public_only: bool) -> list[str]:
    """The addresses to connect to; raises TaskFailed for a non-public one when only public ones may be used."""
    try:
        infos = socket.getaddrinfo(target.host, target.port, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError):
        raise Unreachable(f"the host {target.host} could not be resolved") from None
    addresses = list(dict.fromkeys(info[4][0] for info in infos))
    if public_only:
        for address in addresses:
            ip = ipaddress.ip_address(address.split("%", 1)[0])
            if not ip.is_global:
                raise TaskFailed(f"the endpoint's host {target.host} resolves to a non-public address ({ip}); "
                                 "only endpoints on the public internet are called")
    return addresses


def tls_context() -> ssl.SSLContext:
    """Certificates checked against the host name, as any browser would."""
    return ssl.create_default_context()


class _PinnedHTTP(http.client.HTTPConnection):
    def __init__(self, target: Target, address: str, timeout: float):
        super().__init__(target.host, target.port, timeout=timeout)
        self.address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self.address, self.port), self.timeout)


class _PinnedHTTPS(http.client.HTTPSConnection):
    def __init__(self, target: Target, address: str, timeout: float):
        super().__init__(target.host, target.port, timeout=timeout, context=tls_context())
        self.address = address

    def connect(self) -> None:
        sock = socket.create_connection((self.address, self.port), self.timeout)
        # server_hostname: the name, not the address, goes in SNI and is what the certificate must match.
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)


def open_connection(target: Target, addresses: list[str], timeout: float) -> http.client.HTTPConnection:
    """A connected connection to the first of ``addresses`` that answers."""
    kind = _PinnedHTTPS if target.scheme == "https" else _PinnedHTTP
    last = "no address"
    for address in addresses:
        connection = kind(target, address, timeout)
        try:
            connection.connect()
            return connection
        except ssl.SSLCertVerificationError as exc:
            connection.close()
            raise TaskFailed(f"the endpoint's TLS certificate is not valid for {target.host} ({exc.verify_message})") \
                from None
        except TimeoutError:
            connection.close()
            last = "the connection timed out"
        except OSError as exc:
            connection.close()
            last = type(exc).__name__
    raise Unreachable(last)


def is_loopback_host(host: str) -> bool:
    """localhost, or a loopback address written out (127.0.0.0/8, ::1)."""
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
