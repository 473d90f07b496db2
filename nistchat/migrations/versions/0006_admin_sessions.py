"""Admin sessions held on the server (admin_session), so logout and "log out everywhere" revoke
them: before, the admin flag lived only in the signed cookie.

Revision ID: 0006
Revises: 0005
"""
import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "admin_session",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(), nullable=False),
        sa.Column("revoked_at", sa.DateTime()),
        sa.Column("address", sa.String(64), nullable=False),
    )
    with op.batch_alter_table("admin_session") as batch:
        batch.create_index("ix_admin_session_revoked_at", ["revoked_at"])


def downgrade():
    with op.batch_alter_table("admin_session") as batch:
        batch.drop_index("ix_admin_session_revoked_at")
    op.drop_table("admin_session")
