from agent_access.cli import run

run()
