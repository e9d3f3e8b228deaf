"""The two run profiles, and the one way a size is chosen by profile.

``quick`` runs in minutes on 2 CPU cores (``make reproduce``, the tests); ``full`` runs the real
experiment sizes. A claim check or a figure that sizes its work by profile writes

    trials = pick(profile, quick=200, full=2000)

rather than branching on the profile's name, so that every size of both profiles sits side by
side and an unknown profile is an error instead of silently meaning ``full``.
"""
from __future__ import annotations

from typing import TypeVar

PROFILES = ("quick", "full")

T = TypeVar("T")


def check_profile(profile: str) -> str:
    """``profile`` itself when it is one of :data:`PROFILES`; a ValueError otherwise."""
    if profile not in PROFILES:
        raise ValueError(f"profile {profile!r} is not one of {PROFILES}")
    return profile


def pick(profile: str, quick: T, full: T) -> T:
    """The value ``quick`` or ``full`` that belongs to ``profile``."""
    return quick if check_profile(profile) == "quick" else full
