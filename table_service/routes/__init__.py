"""The tables' HTTP and WebSocket routes: dealer, supervisor, operator, regulator.

They stand above the table procedure (``table/``), the HTTP plumbing (``api/``), the
studio and the consoles, and use all four; ``table_service/app.py`` mounts them.
"""
