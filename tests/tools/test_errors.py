from tools.errors import ToolCancelled, ToolError, ToolInputError


def test_it_keeps_the_message_for_the_model():
    assert ToolError("Unknown zone").message == "Unknown zone"
    assert str(ToolError("Unknown zone")) == "Unknown zone"


def test_it_treats_input_errors_as_tool_errors():
    assert issubclass(ToolInputError, ToolError)


def test_it_keeps_cancellation_apart_from_failures():
    assert not issubclass(ToolCancelled, ToolError)
