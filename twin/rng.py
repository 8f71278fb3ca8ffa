"""Counter-based random streams (model.md §1).

Every variate in the twin is an inverse-CDF transform of a uniform

    u = Philox4x32-10(counter = (k, stream, digest_lo, digest_hi), key = key(seed, replication))

where ``digest`` is a 64-bit BLAKE2b digest of the component's dotted path, ``stream`` numbers the
purpose (0 failures, 1 repair times, 2 detection delays) and ``k`` is the index of the draw for
that stream.
So the k-th draw of a part depends only on (seed, replication, path, k): never on the order in
which the simulation asks, on other components, or on the process that runs it. Drawing a
whole population at once and drawing one part at a time give bit-identical numbers.

Philox4x32-10 is Salmon et al., "Parallel random numbers: as easy as 1, 2, 3" (SC 2011),
written here in numpy uint64 array operations and checked against the Random123 known-answer
vectors in the tests. All draws go through one array function, :func:`uniforms`.
"""

from __future__ import annotations

import hashlib
from typing import Iterable

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import ndtri

_M0 = np.uint64(0xD2511F53)
_M1 = np.uint64(0xCD9E8D57)
_W0 = np.uint64(0x9E3779B9)
_W1 = np.uint64(0xBB67AE85)
_MASK32 = np.uint64(0xFFFFFFFF)
_SHIFT32 = np.uint64(32)
_ONE_BELOW = float(np.nextafter(1.0, 0.0))  # largest float64 below 1


def philox4x32_10(counter: NDArray[np.uint64], key: tuple[int, int]) -> NDArray[np.uint64]:
    """Philox4x32 with 10 rounds.

    ``counter`` has shape (4, n) of 32-bit words held in uint64; ``key`` is two 32-bit words.
    Returns the (4, n) output words (each < 2**32) as uint64.
    """
    c0, c1, c2, c3 = (np.asarray(w, dtype=np.uint64) & _MASK32 for w in counter)
    k0 = np.uint64(key[0]) & _MASK32
    k1 = np.uint64(key[1]) & _MASK32
    with np.errstate(over="ignore"):
        for rnd in range(10):
            if rnd:
                k0 = (k0 + _W0) & _MASK32
                k1 = (k1 + _W1) & _MASK32
            p0 = _M0 * c0
            p1 = _M1 * c2
            hi0, lo0 = p0 >> _SHIFT32, p0 & _MASK32
            hi1, lo1 = p1 >> _SHIFT32, p1 & _MASK32
            c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return np.stack([c0, c1, c2, c3])


_M32 = 0xFFFFFFFF


def _key_schedule(key: tuple[int, int]) -> tuple[int, ...]:
    """The 20 round keys (k0, k1 of rounds 0 … 9, interleaved) of Philox4x32-10 under ``key``: the same
    Weyl increments as :func:`philox4x32_10`, computed once per key (a replication draws all its single
    numbers under one key)."""
    k0, k1 = key[0] & _M32, key[1] & _M32
    out: list[int] = []
    for rnd in range(10):
        if rnd:
            k0 = (k0 + 0x9E3779B9) & _M32
            k1 = (k1 + 0xBB67AE85) & _M32
        out += (k0, k1)
    return tuple(out)


_SCHEDULES: dict[tuple[int, int], tuple[int, ...]] = {}
"""Round keys per Philox key (:func:`_key_schedule`), kept for the keys in use (cleared past 64 keys)."""


def uniform1(key: tuple[int, int], digest: int, k: int, stream: int = 0) -> float:
    """One uniform of :func:`uniforms` for a single (digest, k), in plain Python integers.

    The same Philox4x32-10 rounds and the same 53-bit conversion, so the number is bit-identical to
    ``uniforms(key, [digest], [k], stream)[0]`` (tested); it costs ~3 µs where one numpy call on a
    one-element array costs ~80 µs. Used for the scattered single draws of the event loop (a repair
    time, a detection delay, one renewed lifetime). The rounds are written out, with the key's round
    keys computed once per key (:func:`_key_schedule`): the same integer operations as the loop.
    """
    if k >> 32 or k < 0:
        raise ValueError("draw index k must be below 2**32")
    ks = _SCHEDULES.get(key)
    if ks is None:
        if len(_SCHEDULES) >= 64:
            _SCHEDULES.clear()
        ks = _SCHEDULES[key] = _key_schedule(key)
    m = _M32
    (a0, b0, a1, b1, a2, b2, a3, b3, a4, b4, a5, b5, a6, b6, a7, b7, a8, b8, a9, _) = ks  # (locals, not 19 subscripts)
    c0, c1, c2, c3 = k, stream & m, digest & m, (digest >> 32) & m
    # ten rounds: p0 = M0·c0, p1 = M1·c2; (c0, c1, c2, c3) = (hi(p1) ^ c1 ^ k0, lo(p1), hi(p0) ^ c3 ^ k1, lo(p0))
    p0 = 0xD2511F53 * c0
    p1 = 0xCD9E8D57 * c2
    c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ a0, p1 & m, (p0 >> 32) ^ c3 ^ b0, p0 & m
    p0 = 0xD2511F53 * c0
    p1 = 0xCD9E8D57 * c2
    c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ a1, p1 & m, (p0 >> 32) ^ c3 ^ b1, p0 & m
    p0 = 0xD2511F53 * c0
    p1 = 0xCD9E8D57 * c2
    c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ a2, p1 & m, (p0 >> 32) ^ c3 ^ b2, p0 & m
    p0 = 0xD2511F53 * c0
    p1 = 0xCD9E8D57 * c2
    c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ a3, p1 & m, (p0 >> 32) ^ c3 ^ b3, p0 & m
    p0 = 0xD2511F53 * c0
    p1 = 0xCD9E8D57 * c2
    c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ a4, p1 & m, (p0 >> 32) ^ c3 ^ b4, p0 & m
    p0 = 0xD2511F53 * c0
    p1 = 0xCD9E8D57 * c2
    c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ a5, p1 & m, (p0 >> 32) ^ c3 ^ b5, p0 & m
    p0 = 0xD2511F53 * c0
    p1 = 0xCD9E8D57 * c2
    c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ a6, p1 & m, (p0 >> 32) ^ c3 ^ b6, p0 & m
    p0 = 0xD2511F53 * c0
    p1 = 0xCD9E8D57 * c2
    c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ a7, p1 & m, (p0 >> 32) ^ c3 ^ b7, p0 & m
    p0 = 0xD2511F53 * c0
    p1 = 0xCD9E8D57 * c2
    c1, c2 = p1 & m, (p0 >> 32) ^ c3 ^ b8  # (this round's c0 and c3 feed only the last round's unread c2, c3)
    p1 = 0xCD9E8D57 * c2
    c0, c1 = (p1 >> 32) ^ c1 ^ a9, p1 & m  # (the last round's c2, c3 are not read)
    mant = ((c0 >> 5) << 26) | (c1 >> 6)
    u = (mant + 0.5) * (1.0 / 9007199254740992.0)
    return u if u < _ONE_BELOW else _ONE_BELOW  # (= min(u, _ONE_BELOW))


STREAMS = {"fail": 0, "repair": 1, "detect": 2, "remediate": 3, "remediate_ok": 4, "replace_ok": 5, "escalate": 6,
           "rma": 7, "ccf": 8, "speed": 9, "infant": 10, "early": 11, "leak_detect": 12, "leak_damage": 13}
"""Stream numbers of a part's purposes (counter word 1): lifetimes, repair and detection times, the
repair ladder's remediation time and outcome, replacement outcome, escalation time and RMA return, a
common-cause group's events (the group's stream), the node-health draws (twin.model.health): a
degraded part's speed, whether a replacement is defective and its early life, and a leak's detection and
the damage it does (twin.model.cooling.leaks)."""


def path_digest(path: str) -> int:
    """Stable 64-bit digest of a dotted component path (BLAKE2b, 8 bytes, little endian)."""
    return int.from_bytes(hashlib.blake2b(path.encode("utf-8"), digest_size=8).digest(), "little")


def path_digests(paths: Iterable[str]) -> NDArray[np.uint64]:
    """Digests of many paths as a uint64 array (:func:`path_digest` of each, read in one go from the
    concatenated little-endian digests: building a 131K-GPU cluster digests ~10^6 paths)."""
    b2 = hashlib.blake2b
    raw = b"".join([b2(p.encode("utf-8"), digest_size=8).digest() for p in paths])
    return np.frombuffer(raw, dtype="<u8").astype(np.uint64)


def replication_key(seed: int, replication: int) -> tuple[int, int]:
    """The 64-bit Philox key of one replication: a SeedSequence child of the root seed."""
    child = np.random.SeedSequence(int(seed), spawn_key=(int(replication),))
    w = child.generate_state(2, dtype=np.uint32)
    return int(w[0]), int(w[1])


SMALL_DRAWS = 16
"""Up to this many draws, :func:`uniforms` computes each with :func:`uniform1` (the same numbers):
the first lifetimes of a small system's parts (a replication of a 2-of-4 group draws 4) cost ~60 µs
in numpy's vectorised rounds, ~20 µs so."""


def uniforms(key: tuple[int, int], digests: ArrayLike, k: ArrayLike, stream: int = 0) -> NDArray[np.float64]:
    """Uniform variates in the open interval (0, 1), one per (digest, k) pair (broadcast).

    The counter is (k, stream, digest_lo, digest_hi): ``stream`` numbers the purposes of one
    component's randomness (its failures, repairs, detection delays: see :data:`STREAMS`), and k
    must be below 2**32. 53 bits from the first two output words, centred in their bin so neither
    0 nor 1 occurs.
    """
    d = np.asarray(digests, dtype=np.uint64)
    kk = np.asarray(k, dtype=np.uint64)
    d, kk = np.broadcast_arrays(d, kk)
    d = d.ravel()
    kk = kk.ravel()
    if kk.size and int(kk.max()) >> 32:
        raise ValueError("draw index k must be below 2**32")
    if kk.size <= SMALL_DRAWS:  # the same numbers in plain Python: a few draws cost less than numpy's calls
        u = np.array([uniform1(key, int(di), int(ki), stream) for di, ki in zip(d.tolist(), kk.tolist())],
                     dtype=np.float64)
        return u.reshape(np.broadcast_shapes(np.shape(digests), np.shape(k)))
    word1 = np.full(kk.shape, np.uint64(stream) & _MASK32, dtype=np.uint64)
    counter = np.stack([kk, word1, d & _MASK32, d >> _SHIFT32])
    out = philox4x32_10(counter, key)
    mant = ((out[0] >> np.uint64(5)) << np.uint64(26)) | (out[1] >> np.uint64(6))
    u = (mant.astype(np.float64) + 0.5) * (1.0 / 9007199254740992.0)
    # mant + 0.5 needs 54 bits above 2**52 and rounds to even: the top mantissa would give 1.0
    u = np.minimum(u, _ONE_BELOW)
    out_u: NDArray[np.float64] = u.reshape(np.broadcast_shapes(np.shape(digests), np.shape(k)))
    return out_u


# ---- inverse CDFs (model.md §1): vectorised, each a pure function of u -----------------

def exponential_from_u(u: NDArray[np.float64], mean_h: float) -> NDArray[np.float64]:
    """Exponential with mean ``mean_h`` hours: −mean·log1p(−u)."""
    return -mean_h * np.log1p(-u)


def weibull_from_u(u: NDArray[np.float64], shape: float, scale_h: float) -> NDArray[np.float64]:
    """Weibull(shape, scale_h): scale·(−log1p(−u))^(1/shape)."""
    return scale_h * np.power(-np.log1p(-u), 1.0 / shape)


def lognormal_from_u(u: NDArray[np.float64], mean_h: float, sigma: float) -> NDArray[np.float64]:
    """Lognormal with arithmetic mean ``mean_h`` and log-sd ``sigma``: exp(μ + σ·ndtri(u))."""
    mu = np.log(mean_h) - 0.5 * sigma * sigma
    out: NDArray[np.float64] = np.exp(mu + sigma * ndtri(u))
    return out


def empirical_from_u(u: NDArray[np.float64], sorted_values_h: NDArray[np.float64]) -> NDArray[np.float64]:
    """Inverse of the empirical CDF of ``sorted_values_h`` (a step function, no interpolation)."""
    n = len(sorted_values_h)
    idx = np.minimum((u * n).astype(np.int64), n - 1)
    return sorted_values_h[idx]
