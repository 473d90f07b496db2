"""Message.attempts: how many times an answer run was started for the message, so a pending
message left by a crashed server is resumed at most once and never re-run in a loop.

Revision ID: 0003
Revises: 0002
"""
import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("message") as batch:
        batch.add_column(sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"))


def downgrade():
    with op.batch_alter_table("message") as batch:
        batch.drop_column("attempts")
