"""The store: where it is, how it is opened, its schema and its migrations.

`location` finds a store, `engine` opens it (pragmas, transactions, error translation),
`models` and `types` describe the schema that the Alembic revisions create, `migrations`
recognises and upgrades stores, `dialect` and `prepared` hold what differs between SQLite and
PostgreSQL and the compiled hot statements, `ids` the id formats, `settings` the store's
settings and the tokens of its vectors.

Imports: the leaves only; nothing here knows memory or evidence rules.
"""
