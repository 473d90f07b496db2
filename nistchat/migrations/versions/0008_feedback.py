"""Feedback on answers: one vote per browser per answer (up or down, with a reason and optional
text for a down vote), changeable; shown in History, counted on /metrics, exported with the logs.
reported_item: evaluation items admins make from 👎 votes (the `reported` set).

Revision ID: 0008
Revises: 0007
"""
import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "feedback",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("message_id", sa.Integer(), sa.ForeignKey("message.id", ondelete="CASCADE"), nullable=False),
        sa.Column("owner", sa.String(64), nullable=False),
        sa.Column("vote", sa.String(8), nullable=False),
        sa.Column("reason", sa.String(32)),
        sa.Column("text", sa.Text()),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.UniqueConstraint("message_id", "owner", name="uq_feedback_message_owner"),
    )
    with op.batch_alter_table("feedback") as batch:
        batch.create_index("ix_feedback_message_id", ["message_id"])
        batch.create_index("ix_feedback_updated_at", ["updated_at"])
    op.create_table(
        "reported_item",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("feedback_id", sa.Integer(), sa.ForeignKey("feedback.id", ondelete="SET NULL")),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("doc", sa.String(64)),
        sa.Column("category", sa.String(32), nullable=False),
        sa.Column("evidence", sa.JSON(), nullable=False),
        sa.Column("answer", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
    )
    with op.batch_alter_table("reported_item") as batch:
        batch.create_index("ix_reported_item_feedback_id", ["feedback_id"])


def downgrade():
    with op.batch_alter_table("reported_item") as batch:
        batch.drop_index("ix_reported_item_feedback_id")
    op.drop_table("reported_item")
    with op.batch_alter_table("feedback") as batch:
        batch.drop_index("ix_feedback_updated_at")
        batch.drop_index("ix_feedback_message_id")
    op.drop_table("feedback")
