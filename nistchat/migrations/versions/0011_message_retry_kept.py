"""Message.retry_kept: whether a retried answer is the retry's. A retry that did no better than
the first draft leaves the draft in place, and the page said "rewritten" of it; NULL where no
retry ran, and for answers stored before this revision (the page keeps its old note for those).

Revision ID: 0011
Revises: 0010
"""
import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("message") as batch:
        batch.add_column(sa.Column("retry_kept", sa.Boolean(), nullable=True))


def downgrade():
    with op.batch_alter_table("message") as batch:
        batch.drop_column("retry_kept")
