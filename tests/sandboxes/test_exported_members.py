import agentgym.sandboxes


def test_all_is_exactly_the_public_surface() -> None:
    public = {name for name in dir(agentgym.sandboxes) if not name.startswith("_")}
    modules = {name for name in public if type(getattr(agentgym.sandboxes, name)).__name__ == "module"}
    assert set(agentgym.sandboxes.__all__) == public - modules
