"""The core: pure values and rules (questions, answers, decisions, validation, canonical
bytes, images, the exception tree); ``qtypes/`` one module per question type. No I/O."""
