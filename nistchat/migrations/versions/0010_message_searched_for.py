"""Message.searched_for: the standalone question a follow-up was resolved to and searched with
("tell me about the 2nd one" -> the item of the previous answer), shown on the page as "Searched
for: …" so a person sees what was understood; NULL for a question searched as asked.

Revision ID: 0010
Revises: 0009
"""
import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("message") as batch:
        batch.add_column(sa.Column("searched_for", sa.Text(), nullable=True))


def downgrade():
    with op.batch_alter_table("message") as batch:
        batch.drop_column("searched_for")
