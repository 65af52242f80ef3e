"""The schema and its migrations, per backend, each list in the order it was released."""
