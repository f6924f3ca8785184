"""LZ4 compression of kept export text where the server has it (shared by the migrations of the kept
tables; the loader skips this module: its name starts with an underscore)."""


def lz4_available(cursor) -> bool:
    cursor.execute("SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'")
    row = cursor.fetchone()
    return bool(row and row[0])


def set_compression(schema_editor, table: str, columns: tuple[str, ...], method: str) -> None:
    """`method` (lz4 or default) for `columns` of `table` on PostgreSQL; nothing elsewhere, nor for
    lz4 on a server built without it."""
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        if method == "lz4" and not lz4_available(cursor):
            return
    altered = ", ".join(f"ALTER COLUMN {column} SET COMPRESSION {method}" for column in columns)
    schema_editor.execute(f"ALTER TABLE {table} {altered}")
