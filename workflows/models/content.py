"""Content blocks and messages, in the Anthropic Messages API shape, and token usage."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import Field

from workflows.models.base import _Model


class TextBlock(_Model):
    type: Literal["text"] = "text"
    text: str


class ToolUseBlock(_Model):
    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any] = Field(default_factory=dict)


class MediaSource(_Model):
    type: Literal["base64"] = "base64"
    media_type: str
    data: str


class ImageBlock(_Model):
    """An image (Read of a PNG, JPEG, GIF or WebP file: workflows.tools.media), inside a tool_result."""

    type: Literal["image"] = "image"
    source: MediaSource


class DocumentBlock(_Model):
    """A PDF (Read of a .pdf file: workflows.tools.media), inside a tool_result."""

    type: Literal["document"] = "document"
    source: MediaSource


ResultContent = Annotated[Union[TextBlock, ImageBlock, DocumentBlock], Field(discriminator="type")]


class ToolResultBlock(_Model):
    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: str | list[ResultContent] = ""
    is_error: bool = False

    @property
    def text(self) -> str:
        """The result's text; an image or a PDF in it is named in brackets (``[image/png]``)."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(b.text if isinstance(b, TextBlock) else f"[{b.source.media_type}]" for b in self.content)


class ThinkingBlock(_Model):
    type: Literal["thinking"] = "thinking"
    thinking: str = ""
    signature: str = ""


ContentBlock = Annotated[Union[TextBlock, ToolUseBlock, ToolResultBlock, ThinkingBlock], Field(discriminator="type")]


class Usage(_Model):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens,
        )

    @property
    def total(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_creation_input_tokens
            + self.cache_read_input_tokens
        )


class Message(_Model):
    role: Literal["user", "assistant"]
    content: str | list[ContentBlock]

    def blocks(self) -> list:
        if isinstance(self.content, str):
            return [TextBlock(text=self.content)]
        return list(self.content)

    def tool_uses(self) -> list[ToolUseBlock]:
        return [b for b in self.blocks() if isinstance(b, ToolUseBlock)]

    def text(self) -> str:
        return "".join(b.text for b in self.blocks() if isinstance(b, TextBlock))

    def to_api(self) -> dict:
        return self.model_dump(mode="json", include={"role", "content"}, exclude_none=True)


class AssistantMessage(Message):
    role: Literal["assistant"] = "assistant"
    id: str | None = None
    model: str | None = None
    stop_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
