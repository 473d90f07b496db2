"""Message.docs: the documents a person limited the search to (null or [] = all), shown on the
answer, in history and in the logs. Message.kind: "chat" for a question, "audit" for a pasted
answer checked against the publications; Message.audit holds an audit's trust score, label and
per-sentence results.

Revision ID: 0005
Revises: 0004
"""
import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("message") as batch:
        batch.add_column(sa.Column("docs", sa.JSON()))
        batch.add_column(sa.Column("kind", sa.String(16), nullable=False, server_default="chat"))
        batch.add_column(sa.Column("audit", sa.JSON()))


def downgrade():
    with op.batch_alter_table("message") as batch:
        batch.drop_column("audit")
        batch.drop_column("kind")
        batch.drop_column("docs")
