"""Sessions: append, a tool call and its result, a branch, a fork, state and search."""

from sessionary import Message, SessionManager, ToolCallPart

with SessionManager("sqlite:///quickstart.db", tenant="acme", user="alice") as manager:
    chat = manager.create(name="support", model="gpt-4o")

    question = chat.append(Message.user("Why does the build fail on main?"))
    chat.append(
        Message.assistant(
            "Let me look at the CI log.",
            tool_calls=[ToolCallPart(id="call_1", name="read_log", arguments={"job": "build"})],
        )
    )
    chat.append(Message.tool("call_1", "error: missing dependency 'libfoo' in setup.py"))
    chat.append(Message.assistant("setup.py lacks libfoo; add it to install_requires."))

    # The active path, oldest first; the last 2 messages widen to keep the tool pair whole.
    print([m.role for m in chat.history()])  # ['user', 'assistant', 'tool', 'assistant']
    print([m.role for m in chat.history(limit=2)])  # ['assistant', 'tool', 'assistant']
    print(chat.path_length(), chat.message_count())  # 4 4

    # Branch: answer the first question again; the new message becomes the head.
    retry = chat.append(Message.assistant("Checking the lock file first."), parent=question.id)
    print(len(chat.branches(question.id)))  # 2
    print(chat.history()[-1].id == retry.id)  # True

    # Fork the original line into its own session.
    fork = manager.fork(chat.id, at_message_id=question.id, name="support (fork)")
    print(fork.path_length())  # 1

    # State: merge patches, versioned.
    state = chat.update_state({"ticket": "CI-42", "files": ["setup.py"]})
    chat.update_state({"files": None}, expected_version=state.version)  # None deletes
    print(chat.get_state().data)  # {'ticket': 'CI-42'}

    # Search this session (manager.search looks in every session of the user).
    print(sorted(hit.role for hit in chat.search("libfoo")))  # ['assistant', 'tool']
