"""What memory and evidence search share: reading a user's query into terms each engine can match
(`query`), the search modes (`modes`), the fusion of two rankings that `hybrid` runs
(`fusion`) and the common words an `any` search leaves out (`stopwords`).

Imports: nothing of Lantern's. Pure Python, so both domains (and the surfaces, for their help
texts) can use it without loading a database layer.
"""
