raise ImportError("this implementation needs a GPU runtime")
