"""A studio: many tables over several processes on one database.

Each table has one writer at a time, enforced by a lease row with a fencing token that
every table transaction checks before it commits (``lease``); the processes share the
tables out and take over the tables of a process that died (``coordinator``).
"""
