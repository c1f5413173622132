"""Moving a store's content in and out: Lantern's own JSON Lines export and import.

Like `lantern.maintenance`, this works on every table at once and sits above both domains.
"""
