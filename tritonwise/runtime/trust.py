"""Whom a cache directory trusts: the rule deciding whether tritonwise may import code from it.

Checksums catch damage, not tampering, so, as ssh's StrictModes asks: the directory and every one
above it is owned by root or this user and not writable by others (except a root-owned sticky
ancestor such as /tmp, and group write by the owner's private group), and so is what it holds. The
path is checked as it resolves; a directory not there yet is judged by its ancestors.
"""

from __future__ import annotations

import functools
import grp
import os
import pwd
import stat
from pathlib import Path
from typing import Optional


def directory_problem(path: Path, uid: Optional[int] = None) -> Optional[str]:
    """Why the cache directory `path` cannot be trusted (one phrase), or None when it can."""
    uid = os.geteuid() if uid is None else uid
    real = Path(os.path.realpath(path))
    for node in (real, *real.parents):
        try:
            st = os.stat(node)
        except OSError:
            continue  # missing (made later, by this process) or not reachable: nothing to load there
        problem = _problem(node, st, uid, ancestor=node != real)
        if problem is not None:
            return problem
    return None


def entry_problem(directory: Path, path: Path, uid: Optional[int] = None) -> Optional[str]:
    """Why `path` (or a directory between it and the trusted `directory`) cannot be trusted, or None."""
    uid = os.geteuid() if uid is None else uid
    node = path
    while node != directory and directory in node.parents:
        try:
            st = os.stat(node)
        except OSError:
            return None
        problem = _problem(node, st, uid, ancestor=False)
        if problem is not None:
            return problem
        node = node.parent
    return None


def _problem(node: Path, st: os.stat_result, uid: int, ancestor: bool) -> Optional[str]:
    if st.st_uid not in (0, uid):
        user = _named(st.st_uid, pwd.getpwuid, "pw_name")
        return f"{node} is owned by user {user}, neither root nor this user"
    others = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if not others:
        return None
    if ancestor and st.st_uid == 0 and st.st_mode & stat.S_ISVTX:
        return None  # /tmp: nobody may rename what this user owns there
    if others & stat.S_IWOTH:
        return f"{node} is writable by every user (mode {stat.S_IMODE(st.st_mode):o})"
    if private_group(st.st_gid, st.st_uid):
        return None
    group = _named(st.st_gid, grp.getgrgid, "gr_name")
    return f"{node} is writable by group {group} (mode {stat.S_IMODE(st.st_mode):o})"


@functools.lru_cache(maxsize=None)
def private_group(gid: int, owner: int) -> bool:
    """The group `gid` has no member but the user `owner`: none other has it as primary group
    and it lists none other (a user-private group). Unknown groups or users are not private."""
    try:
        group, owner_entry = grp.getgrgid(gid), pwd.getpwuid(owner)
    except KeyError:
        return False
    if any(member != owner_entry.pw_name for member in group.gr_mem):
        return False
    if any(user.pw_gid == gid and user.pw_uid != owner for user in pwd.getpwall()):
        return False
    # a user-private group bears its user's name: a shared group whose members a directory
    # service does not enumerate (gr_mem empty, getpwall partial) is not taken for one
    return group.gr_name == owner_entry.pw_name and (owner_entry.pw_gid == gid or bool(group.gr_mem))


def _named(number: int, lookup, field: str) -> str:
    """`name (number)` from the user or group database (`lookup`), or the number where it has none."""
    try:
        return f"{getattr(lookup(number), field)} ({number})"
    except KeyError:
        return str(number)
