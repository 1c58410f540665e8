"""``AsyncMessage``: a received message whose settle methods are coroutines.

``types.Message`` binds *synchronous* settle methods, and overriding them as coroutines
would break every caller typed against ``Message``. So the asyncio client wraps instead:
an ``AsyncMessage`` exposes the same read-only fields (delegated to ``.message``, the
plain ``Message``) and ``await m.complete()`` / ``abandon`` / ``reject`` / ``defer`` /
``renew``. Peeked messages hold no lock and stay plain ``Message`` values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mqlite import errors
from mqlite.types import Message

if TYPE_CHECKING:
    from mqlite.sdk.aio import AsyncClient


class AsyncMessage:
    __slots__ = ("_client", "message")

    def __init__(self, message: Message, client: AsyncClient | None) -> None:
        self.message = message
        self._client = client

    def __repr__(self) -> str:
        return f"Async{self.message!r}"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, AsyncMessage):
            return self.message == other.message
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.message.queue, self.message.seq_number, self.message.lock_token))

    # -- settlement -----------------------------------------------------------------------

    def _require(self) -> AsyncClient:
        if self._client is None or not self.message.lock_token:
            raise errors.InvalidArgument(
                "this message holds no lock to settle (peeked or receive-and-delete)"
            )
        return self._client

    async def complete(self) -> None:
        m = self.message
        await self._require().complete(m.queue, m.seq_number, m.lock_token)

    async def abandon(self, delay_ms: int = 0, error: str = "") -> None:
        m = self.message
        await self._require().abandon(m.queue, m.seq_number, m.lock_token, delay_ms, error)

    async def reject(self, reason: str = "", description: str = "") -> None:
        m = self.message
        await self._require().reject(m.queue, m.seq_number, m.lock_token, reason, description)

    async def defer(self) -> None:
        m = self.message
        await self._require().defer(m.queue, m.seq_number, m.lock_token)

    async def renew(self) -> int:
        m = self.message
        return await self._require().renew(m.queue, m.seq_number, m.lock_token)

    # -- the fields of Message, read-only -------------------------------------------------

    @property
    def seq_number(self) -> int:
        return self.message.seq_number

    @property
    def queue(self) -> str:
        return self.message.queue

    @property
    def body(self) -> bytes:
        return self.message.body

    @property
    def message_id(self) -> str:
        return self.message.message_id

    @property
    def group_id(self) -> str:
        return self.message.group_id

    @property
    def subject(self) -> str:
        return self.message.subject

    @property
    def correlation_id(self) -> str:
        return self.message.correlation_id

    @property
    def reply_to(self) -> str:
        return self.message.reply_to

    @property
    def content_type(self) -> str:
        return self.message.content_type

    @property
    def properties(self) -> dict[str, str]:
        return self.message.properties

    @property
    def delivery_count(self) -> int:
        return self.message.delivery_count

    @property
    def enqueued_at_ms(self) -> int:
        return self.message.enqueued_at_ms

    @property
    def locked_until_ms(self) -> int:
        return self.message.locked_until_ms

    @property
    def lock_token(self) -> str:
        return self.message.lock_token
