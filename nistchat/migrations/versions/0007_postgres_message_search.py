"""History search on PostgreSQL (a generated tsvector column, GIN index); on SQLite, the FTS5
index filled again from the shown question.

PostgreSQL: the column holds the shown question (the topic label or the question) and the
answer, English stemming; generated, so every write path is indexed, as 0002's triggers do on
SQLite. SQLite: 0002's FTS5 table is the search; 0002 first filled it with FTS5's 'rebuild',
which indexes `question` where the triggers index the label when there is one, so a labelled
message from before 0002 was found by the wrong words, and its later update or delete removed
words the index did not hold.

Revision ID: 0007
Revises: 0006
"""
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade():
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        op.execute("INSERT INTO message_fts(message_fts) VALUES ('delete-all')")
        op.execute("INSERT INTO message_fts(rowid, question, answer) "
                   "SELECT id, coalesce(label, question), answer FROM message")
        return
    if dialect != "postgresql":
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
