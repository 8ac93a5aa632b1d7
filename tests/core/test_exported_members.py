import agentgym


def test_all_is_exactly_the_public_surface():
    public = {name for name in dir(agentgym) if not name.startswith("_")}
    modules = {name for name in public if type(getattr(agentgym, name)).__name__ == "module"}
    assert set(agentgym.__all__) == public - modules
