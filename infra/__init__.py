"""The Pulumi program: AWS resources for the agent-access API, and the publisher."""
