"""The external ids an input has used so far, each with the line of its first use, in memory that does
not grow with the input.

An import refuses a repeated id with the line that used it first, before anything is written, so it
keeps every id it has read. A dict costs about 110 bytes an id: 110 MB for a million conversations, and
past two million the import would hold more than 300 MB. Up to `IN_MEMORY` ids they are kept in a dict;
past that, in a private temporary SQLite database (Python's own sqlite3, on disk, its cache bounded,
deleted when closed), where each further id costs one statement (about 2 us for ids in order, 10 us for
random ones).
"""

from __future__ import annotations

import sqlite3

IN_MEMORY = 200_000
CACHE_KIB = 16_000  # SQLite's page cache, once the ids are on disk


class SeenIds:
    """`first_use(id, line)`: the line that used `id` before, else None (noting `line` as its first use).
    `close()` drops the ids, and the temporary database if there is one."""

    def __init__(self, in_memory: int = IN_MEMORY):
        self.in_memory = in_memory
        self.lines: dict[str, int] = {}
        self.database: sqlite3.Connection | None = None

    def first_use(self, key: str, line: int) -> int | None:
        if self.database is None:
            before = self.lines.get(key)
            if before is not None:
                return before
            self.lines[key] = line
            if len(self.lines) > self.in_memory:
                self._to_disk()
            return None
        if self.database.execute("INSERT OR IGNORE INTO ids VALUES (?, ?)", (key, line)).rowcount:
            return None
        return self.database.execute("SELECT line FROM ids WHERE id = ?", (key,)).fetchone()[0]

    def __len__(self) -> int:
        if self.database is None:
            return len(self.lines)
        return self.database.execute("SELECT count(*) FROM ids").fetchone()[0]

    def _to_disk(self) -> None:
        # "" is a private temporary database on disk, deleted when its connection closes; nothing else
        # writes it, so it needs neither a journal nor syncs.
        database = sqlite3.connect("", isolation_level=None)
        database.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        database.execute("PRAGMA journal_mode = OFF")
        database.execute("PRAGMA synchronous = OFF")
        database.execute("CREATE TABLE ids (id TEXT PRIMARY KEY, line INTEGER NOT NULL) WITHOUT ROWID")
        database.execute("BEGIN")
        database.executemany("INSERT INTO ids VALUES (?, ?)", sorted(self.lines.items()))
        self.database, self.lines = database, {}

    def close(self) -> None:
        self.lines = {}
        if self.database is not None:
            self.database.close()
            self.database = None
