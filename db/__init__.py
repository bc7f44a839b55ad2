"""Storage: SQLAlchemy 2 async models, engine and session factory, data access, Alembic migrations."""
