"""Several web processes on one database: the reader queue's tickets (reader_ticket), and the
answers in progress with their stream events (answer_run, answer_event), so a ticket's place and
the caps hold across processes and any process can follow an answer another one writes.

Revision ID: 0009
Revises: 0008
"""
import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "reader_ticket",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("priority", sa.Integer(), nullable=False),
        sa.Column("owner", sa.String(64)),
        sa.Column("state", sa.String(8), nullable=False),
        sa.Column("holder", sa.String(80), nullable=False),
        sa.Column("lease_until", sa.Float(), nullable=False),
        sqlite_autoincrement=True,  # SQLite would give a finished ticket's number to the next one
    )
    with op.batch_alter_table("reader_ticket") as batch:
        batch.create_index("ix_reader_ticket_holder", ["holder"])
    op.create_table(
        "answer_run",
        sa.Column("message_id", sa.Integer(), sa.ForeignKey("message.id", ondelete="CASCADE"), primary_key=True,
                  autoincrement=False),
        sa.Column("holder", sa.String(80), nullable=False),
        sa.Column("lease_until", sa.Float(), nullable=False),
    )
    op.create_table(
        "answer_event",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("message_id", sa.Integer(), sa.ForeignKey("message.id", ondelete="CASCADE"), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("events", sa.Text(), nullable=False),
        sa.UniqueConstraint("message_id", "seq", name="uq_answer_event_message_seq"),
    )


def downgrade():
    op.drop_table("answer_event")
    op.drop_table("answer_run")
    with op.batch_alter_table("reader_ticket") as batch:
        batch.drop_index("ix_reader_ticket_holder")
    op.drop_table("reader_ticket")
