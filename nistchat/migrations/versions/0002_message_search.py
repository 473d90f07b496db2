"""Full-text search over questions and answers (SQLite FTS5, external content on `message`),
kept in sync by triggers so every write path (web, API, CLI) is indexed. SQLite only: on
PostgreSQL the search column and its index come with 0007.

Revision ID: 0002
Revises: 0001
"""
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade():
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute("CREATE VIRTUAL TABLE message_fts USING fts5("
               "question, answer, content='message', content_rowid='id', tokenize='porter unicode61')")
    op.execute("""CREATE TRIGGER message_fts_ai AFTER INSERT ON message BEGIN
        INSERT INTO message_fts(rowid, question, answer)
        VALUES (new.id, coalesce(new.label, new.question), new.answer);
    END""")
    op.execute("""CREATE TRIGGER message_fts_ad AFTER DELETE ON message BEGIN
        INSERT INTO message_fts(message_fts, rowid, question, answer)
        VALUES ('delete', old.id, coalesce(old.label, old.question), old.answer);
    END""")
    op.execute("""CREATE TRIGGER message_fts_au AFTER UPDATE ON message BEGIN
        INSERT INTO message_fts(message_fts, rowid, question, answer)
        VALUES ('delete', old.id, coalesce(old.label, old.question), old.answer);
        INSERT INTO message_fts(rowid, question, answer)
        VALUES (new.id, coalesce(new.label, new.question), new.answer);
    END""")
    # Not 'rebuild': it reads message.question, while the triggers index the shown question
    # (the label when there is one); the index must hold what the triggers will delete.
    op.execute("INSERT INTO message_fts(rowid, question, answer) "
               "SELECT id, coalesce(label, question), answer FROM message")


def downgrade():
    if op.get_bind().dialect.name != "sqlite":
        return
    for trigger in ("message_fts_ai", "message_fts_ad", "message_fts_au"):
        op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    op.execute("DROP TABLE IF EXISTS message_fts")
