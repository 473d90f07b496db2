"""Stored evaluation runs: a run's state and progress (a run started from the admin page is a
background job the page polls), its sets, and each item's set and category (the page filters on
them).

Revision ID: 0004
Revises: 0003
"""
import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("eval_run") as batch:
        batch.add_column(sa.Column("status", sa.String(16), nullable=False, server_default="done"))
        batch.add_column(sa.Column("done", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("total", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("sets", sa.String(200)))
    with op.batch_alter_table("eval_item") as batch:
        batch.add_column(sa.Column("set_name", sa.String(64)))
        batch.add_column(sa.Column("category", sa.String(32)))


def downgrade():
    with op.batch_alter_table("eval_item") as batch:
        batch.drop_column("category")
        batch.drop_column("set_name")
    with op.batch_alter_table("eval_run") as batch:
        batch.drop_column("sets")
        batch.drop_column("total")
        batch.drop_column("done")
        batch.drop_column("status")
