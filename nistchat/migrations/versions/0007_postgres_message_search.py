"""Full-text search over questions and answers on PostgreSQL: a generated tsvector column on
`message` (the shown question, i.e. the topic label or the question, and the answer; English
stemming) with a GIN index. Generated, so every write path is indexed, as 0002's triggers do on
SQLite. On SQLite this revision does nothing: 0002's FTS5 table is its search.

Revision ID: 0007
Revises: 0006
"""
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade():
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("ALTER TABLE message ADD COLUMN search_vector tsvector GENERATED ALWAYS AS ("
               "to_tsvector('english'::regconfig, coalesce(label, question)) || "
               "to_tsvector('english'::regconfig, answer)) STORED")
    op.execute("CREATE INDEX ix_message_search_vector ON message USING gin (search_vector)")


def downgrade():
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP INDEX IF EXISTS ix_message_search_vector")
    op.execute("ALTER TABLE message DROP COLUMN IF EXISTS search_vector")
