"""``python -m table_service.cli``: the ``livetable`` command."""

from table_service.cli import main

if __name__ == "__main__":
    main()
